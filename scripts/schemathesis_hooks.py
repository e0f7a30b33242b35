"""Schemathesis hooks for the second run of scripts/test-schemathesis.sh (SCHEMATHESIS_HOOKS).

The contract holds for schemathesis without them (the first run, as a third party runs it). They
only make it check more: openapi.yaml is an OpenAPI 3.0.3 document, which has no keyword for the
schema of each message of an event stream nor for the JSON inside a string. It states them as
extensions named after the keywords of later versions: `x-itemSchema` on a media type (OpenAPI
3.2's `itemSchema`) and `x-contentMediaType` / `x-contentSchema` in a schema (JSON Schema's
`contentMediaType` / `contentSchema`, OpenAPI 3.1). Schemathesis reads a 3.0 document's
`text/event-stream` schema as the schema of each message (the contract's states no type, so that
any message passes) and knows the content keywords, so the hook below gives it the extensions
under those names: it then checks every message of the stream, and the `Event` or `SignedHead`
each one's data holds.
"""

import schemathesis

_PROMOTED = {
    "x-itemSchema": "schema",
    "x-contentMediaType": "contentMediaType",
    "x-contentSchema": "contentSchema",
}


@schemathesis.hook
def before_load_schema(context, raw_schema):
    _promote(raw_schema)


def _promote(node):
    if isinstance(node, dict):
        for extension, keyword in _PROMOTED.items():
            if extension in node:
                node[keyword] = node.pop(extension)
        for value in node.values():
            _promote(value)
    elif isinstance(node, list):
        for value in node:
            _promote(value)
