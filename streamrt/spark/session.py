"""A local SparkSession set up for streamrt: quiet, loopback-bound, workers can import streamrt.

Everything here must happen *before* the JVM starts (PySpark passes builder confs to
spark-submit), which is why it is one function rather than advice in the docs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

import streamrt

__all__ = ("LOG4J2_PROPERTIES", "get_session")

# rootLogger=error hides Spark's INFO/WARN noise. PySpark counts as an "interpreter" and prints
# 'Setting default log level to "WARN"' unless PythonGatewayServer has an explicit level equal
# to root's (found in Spark's Logging.initializeLogging).
LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
logger.pygateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.pygateway.level = error
"""


def _log4j2_file() -> Path:
    path = Path(tempfile.gettempdir()) / f"streamrt-spark-{os.getuid()}" / "log4j2.properties"
    if not path.exists() or path.read_text() != LOG4J2_PROPERTIES:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(LOG4J2_PROPERTIES)
        tmp.replace(path)
    return path


def _prepare_environment() -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Workers unpickle our reader classes by reference, so they must import streamrt.
    root = str(Path(streamrt.__file__).resolve().parent.parent)
    entries = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in entries:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *entries])


def get_session(
    master: str | None = None,
    app_name: str = "streamrt",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Build (or reuse) a session with the ``streamrt`` data sources registered.

    ``master`` defaults to ``local[2]``; a user's master (or ``spark.master`` already set in
    the environment's Spark config) is honoured. ``conf`` adds or overrides Spark confs.
    """
    _prepare_environment()
    java_opts = f"-Dlog4j2.configurationFile={_log4j2_file().as_uri()}"
    settings: dict[str, str] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": java_opts,
    }
    for key, value in (conf or {}).items():
        if key.endswith(".extraJavaOptions"):  # keep the quiet-logs flag next to the user's
            value = f"{java_opts} {value}"
        settings[key] = value
    builder = SparkSession.builder.appName(app_name)
    if master is not None or "MASTER" not in os.environ:
        builder = builder.master(master or "local[2]")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    from streamrt.spark import register

    register(spark)
    return spark
