"""The EHR environment: MedMCP-Calc schema on PostgreSQL, patient materializer, dump loader."""

from calcmate.ehr.server import (
    EHR_TABLES,
    ENV_DSN,
    RO_ROLE,
    EhrDatabase,
    EhrServerError,
    PgServer,
    get_server,
    schema_sql,
    start_server,
)

__all__ = [
    "EHR_TABLES", "ENV_DSN", "RO_ROLE", "EhrDatabase", "EhrServerError", "PgServer", "get_server", "schema_sql",
    "start_server",
]
