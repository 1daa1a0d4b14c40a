"""subscriptions/listen (protocol 2026-07-28) with the official Python SDK's
Client.listen(), against two brain replicas on one PostgreSQL.

Usage: two_replicas.py URL_A URL_B ALICE_TOKEN BOB_TOKEN EVE_TOKEN EVE_AT_ALICES
(alice and bob are one tenant, eve another; EVE_AT_ALICES is eve's subject
in alice's tenant). Exits 0 when every check holds,
printing one line per check; any failure raises.
"""

import asyncio
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourceUpdated

URL_A, URL_B, ALICE, BOB, EVE, EVE_AT_ALICES = sys.argv[1:7]
FOCUS = "brain://projects/p/focus"
SLOT = "brain://projects/p/slots/ui"


def client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(url + "/mcp", http_client=http))


async def next_event(sub, within: float):
    async def first():
        async for event in sub:
            return event
        return None

    return await asyncio.wait_for(first(), within)


async def end_on(c: Client, project: str, slot: str | None, body: str) -> int:
    args = {"project": project, "client_key": "writer"}
    if slot:
        args["slot"] = slot
    s = await c.call_tool("brain_session_start", args)
    session = s.structured_content["session"]
    e = await c.call_tool(
        "brain_session_end",
        {
            "session_id": session["session_id"],
            "expected_client_key": "writer",
            "summary": "s",
            "next_focus": body,
            "expected_focus_revision": session["read_revision"],
        },
    )
    assert e.structured_content["focus_outcome"] == "applied", e
    return e.structured_content["focus_revision_at_end"]


async def main() -> None:
    async with client(URL_A, ALICE) as alice, client(URL_A, EVE) as eve, client(URL_B, BOB) as bob:
        # The projects exist in both tenants before anyone listens.
        await end_on(bob, "p", None, "first")
        await end_on(eve, "p", None, "eve's own")
        async with alice.listen(resource_subscriptions=[FOCUS, SLOT, "brain://projects/_mcp/focus", "file:///x"]) as sub, \
                eve.listen(resource_subscriptions=[FOCUS]) as eve_sub:
            honored = sorted(sub.honored.resource_subscriptions or [])
            assert honored == [FOCUS, SLOT], honored
            print("acknowledged:", honored)

            rev = await end_on(bob, "p", None, "written on replica B")
            event = await next_event(sub, 5)
            assert isinstance(event, ResourceUpdated) and event.uri == FOCUS, event
            print(f"replica A heard replica B's end (revision {rev}):", event.uri)
            read = await alice.read_resource(FOCUS)
            assert read.contents[0].text == "written on replica B", read
            print("and reads its body")

            await end_on(bob, "p", "ui", "slot body")
            event = await next_event(sub, 5)
            assert isinstance(event, ResourceUpdated) and event.uri == SLOT, event
            print("the slot's change too:", event.uri)

            try:
                stray = await next_event(eve_sub, 1)
            except asyncio.TimeoutError:
                stray = None
            assert stray is None, f"another tenant heard it: {stray}"
            print("another tenant listening to the same URI heard nothing")

        # Bounded per credential: eight streams open, the ninth is refused.
        async with client(URL_A, EVE) as e2:
            streams = [e2.listen(resource_subscriptions=[FOCUS]) for _ in range(9)]
            opened = []
            for s in streams[:8]:
                opened.append(await s.__aenter__())
            try:
                ninth = await streams[8].__aenter__()
                # Acknowledged before the server knows the caller, then ended.
                refused = await next_event(ninth, 5) is None
            except asyncio.TimeoutError:
                refused = False
            except Exception as err:
                refused = True
                print("ninth stream:", type(err).__name__)
            assert refused, "a ninth listen stream stayed open"
            print("a ninth stream of one credential is refused")

            # The same subject in another tenant is another credential: its
            # budget is its own, so it still listens and hears its tenant.
            async with client(URL_A, EVE_AT_ALICES) as elsewhere, \
                    elsewhere.listen(resource_subscriptions=[FOCUS]) as own:
                await end_on(bob, "p", None, "heard by eve's subject in acme")
                event = await next_event(own, 5)
                assert isinstance(event, ResourceUpdated) and event.uri == FOCUS, event
                print("the same subject in another tenant keeps its own budget")


asyncio.run(main())
