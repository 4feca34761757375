"""An S3-compatible server for the health store's tests: moto's, on a free loopback port.

Creates the bucket named by its one argument, prints the port on a line of its own once it
serves, and runs until its standard input closes, which happens when the test process that
started it exits, however it exits.
"""

import logging
import sys

import boto3
from moto.server import ThreadedMotoServer


def main() -> None:
    bucket = sys.argv[1]
    # One log line per request would drown the tests' output.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    boto3.client(
        "s3",
        endpoint_url=f"http://{host}:{port}",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    ).create_bucket(Bucket=bucket)
    print(port, flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
