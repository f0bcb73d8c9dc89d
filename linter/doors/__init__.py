"""The doors users come in through: the CLI, the GitHub Action entry and the admission webhook."""
