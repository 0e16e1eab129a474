#!/usr/bin/env python3
"""moto_server (moto 5.2.1), with its signature check fed the request line as sent.

moto checks a signature against werkzeug's request.url, which is rebuilt from the decoded path
and un-quotes part of the query: `prefix=cam%2F` becomes `prefix=cam/`, a key's `%2B` becomes
`+`. botocore then signs that other URL, so every correctly signed request with such a character
fails with SignatureDoesNotMatch (boto3's own requests too). AWS decodes and re-encodes instead.
Here the check sees RAW_URI, the path and query exactly as the client sent them; botocore still
recomputes the whole signature from them. Run with the moto venv's python, moto_server's arguments.
"""
from moto.core import authorization, responses
from moto.server import main

_setup_class = responses.BaseResponse.setup_class
_authenticate = authorization.ActionAuthenticatorMixin._authenticate_and_authorize_action


def setup_class(self, request, full_url, headers, use_raw_body=False):
    self._raw_uri = getattr(request, "environ", {}).get("RAW_URI")
    return _setup_class(self, request, full_url, headers, use_raw_body)


def authenticate_as_sent(self, iam_request_cls, resource="*"):
    raw_uri = getattr(self, "_raw_uri", None)
    if not raw_uri:
        return _authenticate(self, iam_request_cls, resource)
    rebuilt, self.uri = self.uri, raw_uri
    try:
        return _authenticate(self, iam_request_cls, resource)
    finally:
        self.uri = rebuilt


responses.BaseResponse.setup_class = setup_class
authorization.ActionAuthenticatorMixin._authenticate_and_authorize_action = authenticate_as_sent

if __name__ == "__main__":
    main()
