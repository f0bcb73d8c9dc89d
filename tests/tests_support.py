import json
from importlib import resources


def report_schema():
    return json.loads(resources.files("ailint.schemas").joinpath("report.schema.json").read_text())
