"""Prints the text of every page of a PDF with pypdf (tests/it/lab/orders.rs): the requisition
must open in an independent PDF parser and carry the patient's name."""

import sys

from pypdf import PdfReader

reader = PdfReader(sys.argv[1], strict=True)
print(f"pages: {len(reader.pages)}")
for page in reader.pages:
    print(page.extract_text())
