"""Drives the real `gyre` binary through the official Claude Agent SDK for
Python (`claude-agent-sdk`, unmodified, `cli_path` pointed at gyre), with
gyre's mock model behind it. Run by `claude_sdk.rs`:

    python3 claude_sdk.py SCENARIO GYRE WORKSPACE

Each scenario asserts what it expects and exits non-zero with the reason
otherwise. Every message the SDK yields went through its own parser; a
warning it logs (a line it could not parse, a CLI it thinks too old) fails
the scenario too.
"""

import json
import logging
import sys
import time

import anyio
from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    create_sdk_mcp_server,
    tool,
    SystemMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)


class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record.getMessage())


WARNINGS = Warnings()
logging.getLogger("claude_agent_sdk").addHandler(WARNINGS)
logging.getLogger("claude_agent_sdk").setLevel(logging.WARNING)

SCENARIO, GYRE, WORKSPACE = sys.argv[1], sys.argv[2], sys.argv[3]
STDERR = []


def options(**extra):
    base = dict(
        cli_path=GYRE,
        cwd=WORKSPACE,
        permission_mode="bypassPermissions",
        stderr=STDERR.append,
    )
    base.update(extra)
    return ClaudeAgentOptions(**base)


def check(condition, message):
    if not condition:
        raise AssertionError(f"{message}\n--- gyre's stderr:\n" + "\n".join(STDERR))


async def collect(prompt, opts):
    return [m async for m in query(prompt=prompt, options=opts)]


async def turn(client, prompt):
    await client.query(prompt)
    return [m async for m in client.receive_response()]


def result_of(messages):
    results = [m for m in messages if isinstance(m, ResultMessage)]
    check(len(results) == 1, f"one result: {messages}")
    return results[0]


def tool_results(messages):
    return [
        block
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for block in m.content
        if isinstance(block, ToolResultBlock)
    ]


async def query_with_tools():
    messages = await collect("READ-AND-RUN", options())
    check(isinstance(messages[0], SystemMessage) and messages[0].subtype == "init", messages[0])
    calls = [
        b.name
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, ToolUseBlock)
    ]
    check(calls == ["read", "bash"], calls)
    outputs = [str(r.content) for r in tool_results(messages)]
    check("hello from a.txt" in outputs[0] and "from-bash" in outputs[1], outputs)
    assistant = next(m for m in messages if isinstance(m, AssistantMessage))
    check(assistant.model and assistant.usage is not None and assistant.message_id, assistant)
    result = result_of(messages)
    check(result.subtype == "success" and result.result == "done-tools", result)
    check(result.duration_api_ms is not None and result.model_usage, result)


async def client_three_turns():
    async with ClaudeSDKClient(options=options()) as client:
        answers, sessions = [], set()
        for prompt in ["TURN-ONE", "TURN-TWO", "TURN-THREE"]:
            result = result_of(await turn(client, prompt))
            answers.append(result.result)
            sessions.add(result.session_id)
    check(answers == ["one", "two", "three"], answers)
    check(len(sessions) == 1, f"one session: {sessions}")


async def can_use_tool():
    asked = []

    async def decide(tool, tool_input, context):
        asked.append((tool, tool_input.get("command")))
        command = tool_input.get("command", "")
        if "deny-me" in command:
            return PermissionResultDeny(message="not this one")
        if "rewrite-me" in command:
            return PermissionResultAllow(updated_input={"command": "echo rewritten"})
        return PermissionResultAllow()

    opts = options(permission_mode="default", can_use_tool=decide)
    async with ClaudeSDKClient(options=opts) as client:
        messages = await turn(client, "ASK-ME")
    check([a[0] for a in asked] == ["bash"] * 3, asked)
    results = {r.tool_use_id: r for r in tool_results(messages)}
    denied, rewritten, plain = results["toolu_deny"], results["toolu_rewrite"], results["toolu_plain"]
    check(denied.is_error and "not this one" in str(denied.content), denied)
    check("rewritten" in str(rewritten.content) and not rewritten.is_error, rewritten)
    check("plain-call" in str(plain.content), plain)
    check(result_of(messages).result == "perm-done", result_of(messages))


async def interrupt():
    async with ClaudeSDKClient(options=options()) as client:
        await client.query("SLEEP-NOW")
        started = None
        async for message in client.receive_response():
            if started is None and isinstance(message, AssistantMessage):
                if any(isinstance(b, ToolUseBlock) for b in message.content):
                    # The call is running (or about to): stop it.
                    await anyio.sleep(0.3)
                    started = time.monotonic()
                    await client.interrupt()
        check(started is not None, "the sleep call was seen")
        took = time.monotonic() - started
        check(took < 10, f"the interrupted turn ended after {took:.1f} s")
        after = result_of(await turn(client, "AFTER-INTERRUPT"))
        check(after.result == "after", after)


async def partial_messages():
    messages = await collect("PARTIAL", options(include_partial_messages=True))
    kinds = [m.event["type"] for m in messages if isinstance(m, StreamEvent)]
    for kind in [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]:
        check(kind in kinds, f"{kind} in {kinds}")
    text = "".join(
        m.event["delta"].get("text", "")
        for m in messages
        if isinstance(m, StreamEvent) and m.event["type"] == "content_block_delta"
    )
    check(text == "streamed answer", text)


async def resume():
    first = result_of(await collect("REMEMBER-ME", options()))
    second = result_of(await collect("RESUMED", options(resume=first.session_id)))
    check(second.session_id == first.session_id, (first.session_id, second.session_id))
    check(second.result == "resumed-with-history", second)


async def control_requests():
    async with ClaudeSDKClient(options=options()) as client:
        await client.set_permission_mode("acceptEdits")
        await client.set_model("claude-haiku-4-5")
        status = await client.get_mcp_status()
        check("mcpServers" in status, status)
        result = result_of(await turn(client, "TURN-ONE"))
        check(result.result == "one", result)
        init = client._query._initialization_result if client._query else None
        check(init and init.get("claude_code_version"), init)


async def pre_tool_use_hook():
    seen = []

    async def guard(hook_input, tool_use_id, context):
        command = hook_input["tool_input"].get("command", "")
        seen.append((hook_input["hook_event_name"], hook_input["tool_name"], command))
        if "hook-blocked" in command:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "the SDK hook said no",
                }
            }
        return {}

    opts = options(hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[guard])]})
    async with ClaudeSDKClient(options=opts) as client:
        messages = await turn(client, "HOOK-ME")
    check(len(seen) == 2 and all(s[0] == "PreToolUse" for s in seen), seen)
    results = {r.tool_use_id: r for r in tool_results(messages)}
    blocked, passed = results["toolu_blocked"], results["toolu_passed"]
    check(blocked.is_error and "the SDK hook said no" in str(blocked.content), blocked)
    check("hook-passed" in str(passed.content) and not passed.is_error, passed)
    check(result_of(messages).result == "hook-done", result_of(messages))


async def sdk_mcp_server():
    calls = []

    @tool("add", "Adds two numbers", {"a": int, "b": int})
    async def add(args):
        calls.append(args)
        return {"content": [{"type": "text", "text": f"the sum is {args['a'] + args['b']}"}]}

    calc = create_sdk_mcp_server(name="calc", version="1.0.0", tools=[add])
    opts = options(mcp_servers={"calc": calc})
    async with ClaudeSDKClient(options=opts) as client:
        messages = await turn(client, "ADD-NUMBERS")
    check(calls == [{"a": 2, "b": 3}], calls)
    results = {r.tool_use_id: r for r in tool_results(messages)}
    check("the sum is 5" in str(results["toolu_add"].content), results)
    check(result_of(messages).result == "sum-done", result_of(messages))


async def sdk_agents():
    reviewer = AgentDefinition(
        description="Reviews files",
        prompt="SDK-REVIEWER-PROMPT: review what you are given.",
        tools=["Read", "Grep"],
        model="sonnet",
    )
    opts = options(agents={"reviewer": reviewer})
    async with ClaudeSDKClient(options=opts) as client:
        messages = await turn(client, "USE-SDK-AGENT")
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    check("reviewer" in init.data.get("agents", []), init.data)
    results = {r.tool_use_id: r for r in tool_results(messages)}
    check("reviewed-by-the-sdk-agent" in str(results["toolu_task"].content), results)
    check(result_of(messages).result == "agent-done", result_of(messages))


SCENARIOS = {
    "sdk_agents": sdk_agents,
    "sdk_mcp_server": sdk_mcp_server,
    "pre_tool_use_hook": pre_tool_use_hook,
    "query_with_tools": query_with_tools,
    "client_three_turns": client_three_turns,
    "can_use_tool": can_use_tool,
    "interrupt": interrupt,
    "partial_messages": partial_messages,
    "resume": resume,
    "control_requests": control_requests,
}

anyio.run(SCENARIOS[SCENARIO])
check(not WARNINGS.records, f"the SDK warned: {WARNINGS.records}")
print(json.dumps({"ok": SCENARIO}))
