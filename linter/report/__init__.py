"""Reporters: pure consumers of findings. Each module has `render(result, ...) -> str`."""

FORMATS = ("text", "json", "sarif", "github")
