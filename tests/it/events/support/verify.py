"""Verifies webhook deliveries with the `standardwebhooks` package, independently of wearhouse's
own signing code. Reads a JSON list of {"secret", "body", "headers"} on stdin and prints a JSON
list with, per delivery, "ok" or the verification error."""

import json
import sys

from standardwebhooks.webhooks import Webhook


def check(item):
    try:
        Webhook(item["secret"]).verify(item["body"], item["headers"])
        return "ok"
    except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
        return f"{type(e).__name__}: {e}"


print(json.dumps([check(item) for item in json.load(sys.stdin)]))
