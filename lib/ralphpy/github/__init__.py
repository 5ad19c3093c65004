"""Owns talking to GitHub's REST API (docs/github.md): the token, the base URL, the repository
a run works on, rate limits waited out and the ETag cache of listings. PyGithub is imported
only here and only when GitHub is used (docs/decisions/0045)."""
