// Drives the real `gyre` binary through the official Claude Agent SDK for
// TypeScript (`@anthropic-ai/claude-agent-sdk`, unmodified,
// `pathToClaudeCodeExecutable` pointed at gyre), with gyre's mock model
// behind it. Run by `claude_sdk.rs`:
//
//     node claude_sdk.mjs SCENARIO GYRE WORKSPACE
//
// with GYRE_TEST_CLAUDE_SDK_TS naming the npm prefix the SDK is in. Exits
// non-zero, saying why, when a scenario does not see what it expects.

const [scenario, gyre, cwd] = process.argv.slice(2);
const sdk = `${process.env.GYRE_TEST_CLAUDE_SDK_TS}/node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs`;
const { query } = await import(sdk);
const stderr = [];

function check(condition, message) {
  if (!condition) {
    console.error(`${scenario}: ${message}\n--- gyre's stderr:\n${stderr.join('')}`);
    process.exit(1);
  }
}

async function collect(prompt, extra = {}) {
  const options = {
    pathToClaudeCodeExecutable: gyre,
    cwd,
    permissionMode: 'bypassPermissions',
    stderr: (data) => stderr.push(data),
    ...extra,
  };
  const messages = [];
  for await (const message of query({ prompt, options })) messages.push(message);
  return messages;
}

const scenarios = {
  async query_with_tools() {
    const messages = await collect('READ-AND-RUN');
    check(messages[0].type === 'system' && messages[0].subtype === 'init', JSON.stringify(messages[0]));
    check(messages[0].claude_code_version, 'init names a Claude Code version');
    const calls = messages
      .filter((m) => m.type === 'assistant')
      .flatMap((m) => m.message.content.filter((b) => b.type === 'tool_use').map((b) => b.name));
    check(JSON.stringify(calls) === '["read","bash"]', JSON.stringify(calls));
    const outputs = messages
      .filter((m) => m.type === 'user')
      .flatMap((m) => m.message.content.map((b) => String(b.content)));
    check(outputs[0].includes('hello from a.txt') && outputs[1].includes('from-bash'), JSON.stringify(outputs));
    check(messages.every((m) => typeof m.uuid === 'string'), 'every message has a uuid');
    const result = messages.at(-1);
    check(result.type === 'result' && result.subtype === 'success' && result.result === 'done-tools', JSON.stringify(result));
    check(typeof result.duration_api_ms === 'number' && result.modelUsage, JSON.stringify(result));
  },
  async partial_messages() {
    const messages = await collect('PARTIAL', { includePartialMessages: true });
    const kinds = messages.filter((m) => m.type === 'stream_event').map((m) => m.event.type);
    for (const kind of ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']) {
      check(kinds.includes(kind), `${kind} in ${JSON.stringify(kinds)}`);
    }
  },
};

await scenarios[scenario]();
console.log(JSON.stringify({ ok: scenario }));
