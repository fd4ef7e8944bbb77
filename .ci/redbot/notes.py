"""Prints REDbot's notes on one resource from its HAR output; exits 1 if any is WARN or BAD.

usage: notes.py URL HAR_FILE
"""

import json
import sys

url, path = sys.argv[1], sys.argv[2]
with open(path) as handle:
    har = json.load(handle)
entries = har["log"]["entries"]
failing = 0
print(f"redbot {url}")
for entry in entries:
    status = entry["response"]["status"]
    print(f"  {entry['request']['method']} -> {status}")
    for note in entry.get("_red_messages", []):
        level = note["level"]
        print(f"    {level:5} {note['category']:11} {note['summary']}")
        if level in ("WARN", "BAD"):
            failing += 1
if not entries:
    print("  no response")
    failing += 1
sys.exit(1 if failing else 0)
