"""The core every layer shares: the object model (objects, spans, findings, fixes) and the rule API.

Imports no parser, no click, no rich: rules, reporters and the engine all stand on it.
"""
