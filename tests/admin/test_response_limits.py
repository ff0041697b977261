"""A response with a lying length must not make streamrt's own client allocate (and abort).

kio sizes an array from the count on the wire, so a broker (or anything posing as one) that
answers Metadata v12 with a ~2^32 compact-array count made the reading process ask for tens
of GB and die. The client runs in a child process with a capped address space, so a
regression shows as a dead child, not a dead pytest.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap

_CAP = 4 * 1024**3

_SCENARIO = textwrap.dedent(
    """
    import asyncio

    from streamrt.admin.connection import AdminConnectionError, BrokerConnection
    from tests.admin.fake_broker import FakeBroker

    HUGE = b"\\x81\\x80\\x80\\x80\\x10"  # unsigned varint 2^32 + 1: a compact array of 2^32

    def lying_metadata(version, request):
        # header v1 tags, throttle_time, then the brokers array's count
        return b"\\x00" + b"\\x00\\x00\\x00\\x00" + HUGE

    async def main():
        async with FakeBroker({3: (12, 12)}, {3: lying_metadata}) as broker:
            conn = await BrokerConnection.open("127.0.0.1", broker.port, request_timeout=10)
            try:
                await conn.call(3, topics=[], allow_auto_topic_creation=False,
                                include_topic_authorized_operations=False)
            except AdminConnectionError as exc:
                print("refused:", exc)
            else:
                print("decoded")
            await conn.close()

    asyncio.run(main())
    """
)


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_CAP, _CAP))


def test_a_lying_response_count_is_an_error_not_an_allocation() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCENARIO],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_cap_memory,
    )
    assert done.returncode == 0, f"client died ({done.returncode}): {done.stderr[-2000:]}"
    assert "refused:" in done.stdout, done.stdout + done.stderr[-2000:]
    assert "FrameLengthError" in done.stdout
