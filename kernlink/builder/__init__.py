"""`kernlink build`: build keys and reuse (``incremental``), the resident server (``server``)
and ``--watch`` (``watch``). Front-door features: they call the API and the CLI."""
