"""One tools/call from the official MCP Python SDK over stdio, printed as JSON (tests/it/python_sdk.rs).

argv: the server binary, a scratch HOME. Prints the negotiated protocol and the call's result.
"""
import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["run", "--demo"], env={"PVE_ACCESS_TIER": "full", "HOME": sys.argv[2], "PATH": "/usr/bin:/bin"})
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            init = await s.initialize()
            res = await s.call_tool("pve_stop_qemu_vm", {"node": "pve01", "vmid": 101, "confirm": True})
            print(json.dumps({"protocol": init.protocol_version, "result": res.model_dump(mode="json", by_alias=True)}))
asyncio.run(main())
