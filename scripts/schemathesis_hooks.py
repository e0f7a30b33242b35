"""Schemathesis hooks for scripts/test-schemathesis.sh (loaded through schemathesis.toml).

openapi.yaml is an OpenAPI 3.0.3 document, which has no keyword for the schema of each message of
an event stream nor for the JSON inside a string. It states them as extensions named after the
keywords of later versions: `x-itemSchema` on a media type (OpenAPI 3.2's `itemSchema`) and
`x-contentMediaType` / `x-contentSchema` in a schema (JSON Schema's `contentMediaType` /
`contentSchema`, OpenAPI 3.1). Schemathesis reads a 3.0 document's `text/event-stream` schema as
the schema of each message and knows the content keywords, so the hook below gives it the
extensions under those names: it then checks every message of the stream, and the `Event` or
`SignedHead` each one's data holds.

The one YAML response, `GET /openapi.yaml`, is declared as bytes (`type: string, format:
binary`, which generated clients hand over as they are); schemathesis would parse it into a
mapping first, so YAML bodies are given to it as the text they are.
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


# Every YAML media type schemathesis knows (a lookup matches the whole family, in the order of
# registration), so that this one replaces its YAML parser for each.
@schemathesis.deserializer("text/yaml", "text/x-yaml", "application/x-yaml", "text/vnd.yaml", "application/yaml")
def yaml_as_text(context, response):
    return response.content.decode("utf-8")
