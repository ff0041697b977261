"""The authorization matrix: for every API the broker serves, the ACL Apache Kafka requires.

Each :class:`Row` (:mod:`tests.security.authz_model`) is one requirement of one API, taken from
Kafka's ``KafkaApis`` / ``AuthHelper`` / ``ControllerApis``: the resource type and operation, the
error a caller without it gets, the request that exercises it, and the other ACLs the request
needs (granted first, so only the row's own ACL decides). A row with no resource documents an
API Kafka serves without authorization. ``tests/security/test_authz_matrix.py`` runs them on a
real broker; the rows live in three modules by API family.
"""

from __future__ import annotations

from tests.security import authz_rows_cluster, authz_rows_data, authz_rows_groups
from tests.security.authz_model import Row

ROWS: tuple[Row, ...] = (
    *authz_rows_data.ROWS,
    *authz_rows_groups.ROWS,
    *authz_rows_cluster.ROWS,
)
