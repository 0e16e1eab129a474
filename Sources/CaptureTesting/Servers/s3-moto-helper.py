#!/usr/bin/env python3
"""The test side of a moto S3 server (S3TestServer.swift): run with the moto venv's python,
which carries boto3, so objects are read back by a second S3 implementation, not Vigil's.

  create-bucket ENDPOINT BUCKET            wait until moto answers, then create BUCKET
  enable-auth ENDPOINT                     switch moto's auth on; prints "KEY_ID SECRET" of a user allowed s3:*
  sha256 ENDPOINT BUCKET KEY ID SECRET     prints the object's hex SHA-256 (downloaded whole)
  list ENDPOINT BUCKET ID SECRET           prints every key of the bucket, one a line
"""
import hashlib
import json
import sys
import time
import urllib.request


def create_bucket(endpoint, bucket):
    # moto creates a bucket on an unsigned PUT while auth is off (checked on moto 5.2.1).
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}", method="PUT"), timeout=5).read()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def enable_auth(endpoint):
    import boto3
    # The body is the number of requests still let through unauthenticated: the three IAM calls below.
    # text/plain, or Flask reads the body as a form and moto sees none.
    reset = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=b"3", method="POST", headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(reset, timeout=10).read()
    iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    iam.create_user(UserName="vigil")
    key = iam.create_access_key(UserName="vigil")["AccessKey"]
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    iam.put_user_policy(UserName="vigil", PolicyName="s3", PolicyDocument=json.dumps(policy))
    print(key["AccessKeyId"], key["SecretAccessKey"])


def s3(endpoint, key_id, secret):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=key_id,
                        aws_secret_access_key=secret, config=Config(s3={"addressing_style": "path"}))


def main(args):
    command = args[0]
    if command == "create-bucket":
        create_bucket(args[1], args[2])
    elif command == "enable-auth":
        enable_auth(args[1])
    elif command == "sha256":
        endpoint, bucket, key, key_id, secret = args[1:6]
        body = s3(endpoint, key_id, secret).get_object(Bucket=bucket, Key=key)["Body"].read()
        print(hashlib.sha256(body).hexdigest())
    elif command == "list":
        endpoint, bucket, key_id, secret = args[1:5]
        for page in s3(endpoint, key_id, secret).get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                print(item["Key"])
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv[1:])
