"""Scripts/chaos's archive check, run with the moto venv's python (it has boto3: the bucket is
read back by a second S3 implementation, not Vigil's).

  chaos-archive-check.py ENDPOINT BUCKET PREFIX ROOT LOG

Every object under PREFIX/ must equal its local file byte for byte (SHA-256) where that file is
still on disk; every finished local recording must be in the bucket after the final clean stop,
except those the recorder's last stop said it could not upload. Exits 1 on any difference."""
import hashlib
import os
import re
import sys

import boto3

endpoint, bucket, prefix, root, log = sys.argv[1:6]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="chaos", aws_secret_access_key="chaos-secret")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


objects = {}
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
    for item in page.get("Contents", []):
        objects[item["Key"][len(prefix) + 1:]] = item["Key"]

local = set()
for folder, dirs, files in os.walk(root):
    dirs[:] = [d for d in dirs if not d.startswith(".")]
    for name in files:
        if name.endswith((".mp4", ".mkv", ".jpg")) and not name.startswith("."):
            local.add(os.path.relpath(os.path.join(folder, name), root))

defects = []
for path, key in sorted(objects.items()):
    if path not in local:
        continue  # its local copy was deleted (room was needed, or kept no longer): the bucket holds it
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    with open(os.path.join(root, path), "rb") as f:
        if sha256(body) != sha256(f.read()):
            defects.append(f"{key}: the object differs from {path}")

only_local = sorted(local - set(objects))
# What the last stop said it left for the next start (the drain's bound passed).
text = open(log, encoding="utf-8", errors="replace").read()
said = re.findall(r"archive: (\d+) file\(s\) \(.*?\) are left only on this disk|(nothing is left only on this disk)", text)
stated = int(said[-1][0]) if said and said[-1][0] else 0
if len(only_local) > stated:
    defects.append(f"{len(only_local)} finished recording(s) only local after the clean stop "
                   f"(it said {stated}): {', '.join(only_local[:5])}")
print(f"chaos archive: {len(objects)} object(s), {len(local)} local recording(s), {len(only_local)} only local; "
      f"{len(defects)} defect(s)")
for d in defects[:20]:
    print(f"  DEFECT {d}")
sys.exit(1 if defects else 0)
