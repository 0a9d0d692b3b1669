"""Run a linked kernel on a GPU: the driver session, the params block, counters and the ledger
(``launch``, ``run``), a session that launches many times (``session``), host providers, and the
timing of a parity run. Above the linker: it reads a link's output directory, never a contract."""
