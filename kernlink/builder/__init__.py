"""`kernlink build`: build keys and reuse (``incremental``), each component's compile flags
(``flags``), the resident server (``server``) and ``--watch`` (``watch``). Front-door features:
they call the API and the CLI."""
