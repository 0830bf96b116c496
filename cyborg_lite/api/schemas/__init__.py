"""JSON Schemas of request bodies and query strings, one module per
resource. Query values are strings (as they arrive); bodies are JSON."""
