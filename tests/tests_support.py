import json
from importlib import resources


def report_schema():
    return json.loads(resources.files("ailint.schemas").joinpath("report.schema.json").read_text())


def local_hook_config(where, root):
    """A pre-commit config (written in `where`, outside the repository under test) that runs
    the `ailint` hook of `root/.pre-commit-hooks.yaml` as a local `language: system` hook,
    with this interpreter's `ailint`: what the hook does to the staged files, without a
    fresh install per run (`tests/test_integrations.py` installs it with `try-repo`)."""
    import os
    import sys
    from pathlib import Path

    import yaml

    (hook,) = [h for h in yaml.safe_load((Path(root) / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "ailint"]
    exe = os.path.join(os.path.dirname(sys.executable), "ailint")
    local = {**hook, "language": "system", "entry": hook["entry"].replace("ailint", exe, 1)}
    path = Path(where) / "pre-commit-config.yaml"
    path.write_text(json.dumps({"repos": [{"repo": "local", "hooks": [local]}]}))
    return path
