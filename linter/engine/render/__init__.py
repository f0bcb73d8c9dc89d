"""Charts and overlays: render them as they are kept, lint the output, point back at the source.

- `units`: which paths are Helm charts (a folder with `Chart.yaml`) or Kustomize overlays
  (a folder with `kustomization.yaml`), and which files they own (not linted raw).
- `tools`: the helm/kubectl/kustomize binaries and a bounded, offline subprocess.
- `charts`, `overlays`: one rendering each, or one finding on `Chart.yaml` /
  `kustomization.yaml` with the tool's own message.
- `sourcemap`: a finding on rendered output -> the template, values, patch or base line.
- `fixes`: the rendered-output fixes re-expressed as edits of those source files.
- `stage`: the glue `ailint.engine.run.lint` calls.

Nothing is downloaded: remote bases are refused before a build, chart dependencies that
are not vendored are a finding, and the subprocess runs with no usable network.
"""
