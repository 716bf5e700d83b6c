"""Starts SecantusDB (the MongoDB-wire server of the backend tests) as its
`secantusd-py` does, with one change: a transaction idle for up to ten
minutes is kept, where the server's built-in limit (mongod's
`transactionLifetimeLimitSeconds`, 60 s, which this server's command line
cannot set) aborts it. Every canopy snapshot on MongoDB is a transaction;
under the parallel suites this Python server is slow enough that a test's
snapshot sits idle past 60 s while the test writes, and its next read then
fails with `NoSuchTransaction`. Run by `scripts/servers.sh` with the
server's own Python; the arguments are the server's."""

import sys

import secantus.cli
import secantus.server

LIFETIME_SECONDS = 600.0

_init = secantus.server.SecantusDBServer.__init__


def _init_with_lifetime(self, *args, **kwargs):
    kwargs.setdefault("transaction_lifetime_seconds", LIFETIME_SECONDS)
    _init(self, *args, **kwargs)


secantus.server.SecantusDBServer.__init__ = _init_with_lifetime

if __name__ == "__main__":
    sys.exit(secantus.cli.main())
