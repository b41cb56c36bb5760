// Drives the real `gyre acp` binary over stdio as an editor, through the
// official TypeScript ACP SDK (`@agentclientprotocol/sdk`, unmodified: it
// parses every message gyre sends with the protocol's own schema), with
// gyre's mock model behind it. Run by `acp_sdk.rs`:
//
//     node acp_sdk.mjs SCENARIO GYRE WORKSPACE
//
// with GYRE_TEST_ACP_SDK naming the npm prefix the SDK is in (and
// GYRE_TEST_MCP_DIR the MCP reference servers' one). Prints `ok SCENARIO`
// and exits 0, or exits non-zero saying why.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Readable, Writable } from 'node:stream';

const [scenario, gyre, cwd] = process.argv.slice(2);
const sdk = `${process.env.GYRE_TEST_ACP_SDK}/node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js`;
const acp = await import(sdk);
const stderr = [];
const child = spawn(gyre, ['acp'], { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
child.stderr.on('data', (data) => stderr.push(String(data)));

function fail(message) {
  console.error(`${scenario}: ${message}\n--- gyre's stderr:\n${stderr.join('')}`);
  child.kill();
  process.exit(1);
}

function check(condition, message) {
  if (!condition) fail(message);
}

// What the editor saw, in order: updates and permission requests.
const seen = [];
// How the editor answers a permission request (a scenario may replace it).
let answer = (request) => ({ outcome: { outcome: 'selected', optionId: request.options[0].optionId } });
// The editor's unsaved buffers (path -> text), served when it offers fs.
const buffers = new Map();
let offerFs = false;

const updates = (kind) => seen.filter((s) => s.update?.sessionUpdate === kind).map((s) => s.update);
const text = () => updates('agent_message_chunk').map((u) => u.content.text ?? '').join('');

const app = acp
  .client({ name: 'gyre-sdk-test-editor' })
  .onNotification('session/update', (c) => {
    seen.push(c.params);
  })
  .onRequest('session/request_permission', async (c) => {
    seen.push({ permission: c.params });
    return answer(c.params);
  })
  .onRequest('fs/read_text_file', (c) => {
    seen.push({ read: c.params });
    const content = buffers.get(c.params.path);
    if (content === undefined) throw acp.RequestError.resourceNotFound(c.params.path);
    return { content };
  })
  .onRequest('fs/write_text_file', (c) => {
    seen.push({ write: c.params });
    buffers.set(c.params.path, c.params.content);
    return {};
  });

async function connect(op) {
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return app.connectWith(stream, async (agent) => {
    const init = await agent.request('initialize', {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: offerFs, writeTextFile: offerFs } },
    });
    return op(agent, init);
  });
}

async function prompt(agent, sessionId, blocks) {
  const prompt = typeof blocks === 'string' ? [{ type: 'text', text: blocks }] : blocks;
  return agent.request('session/prompt', { sessionId, prompt });
}

const everything = `${process.env.GYRE_TEST_MCP_DIR}/node_modules/.bin/mcp-server-everything`;

const scenarios = {
  // The editor's MCP servers: one that works (its tool is called), one that
  // cannot start (a notice, and the session goes on).
  async mcp_servers(agent) {
    const session = await agent.request('session/new', {
      cwd,
      mcpServers: [
        { name: 'editor', command: everything, args: ['stdio'], env: [] },
        { name: 'broken', command: `${cwd}/no-such-server`, args: [], env: [] },
      ],
    });
    const done = await prompt(agent, session.sessionId, 'USE-EDITOR-MCP');
    check(done.stopReason === 'end_turn', JSON.stringify(done));
    const calls = updates('tool_call').map((u) => u.title);
    check(calls.includes('mcp__editor__echo'), JSON.stringify(calls));
    const results = updates('tool_call_update').filter((u) => u.status === 'completed');
    check(JSON.stringify(results).includes('hi-from-editor'), JSON.stringify(results));
    check(text().includes('mcp-done'), text());
    check(/MCP server `broken`/.test(text()), `a notice names the failed server: ${text()}`);
  },

  // Modes: offered at session/new, switched by the editor, and by gyre when
  // the editor approves the plan (current_mode_update).
  async modes(agent) {
    const session = await agent.request('session/new', { cwd, mcpServers: [] });
    const modes = session.modes;
    check(modes?.currentModeId === 'default', JSON.stringify(modes));
    const ids = modes.availableModes.map((m) => m.id);
    check(JSON.stringify(ids) === '["default","acceptEdits","plan","bypassPermissions"]', JSON.stringify(ids));
    let refused;
    try {
      await agent.request('session/set_mode', { sessionId: session.sessionId, modeId: 'nonsense' });
    } catch (error) {
      refused = error;
    }
    check(refused?.code === -32602, `an unknown mode is refused: ${JSON.stringify(refused)}`);
    await agent.request('session/set_mode', { sessionId: session.sessionId, modeId: 'plan' });
    answer = (request) => {
      const approve = request.options.find((o) => o.optionId === 'default');
      return { outcome: { outcome: 'selected', optionId: (approve ?? request.options[0]).optionId } };
    };
    const done = await prompt(agent, session.sessionId, 'PLAN-FIRST');
    check(done.stopReason === 'end_turn', JSON.stringify(done));
    check(readFileSync(`${cwd}/a.txt`, 'utf8') === 'hello from a.txt\n', 'plan mode wrote nothing');
    const asked = seen.filter((s) => s.permission).map((s) => s.permission);
    check(asked.length === 1 && asked[0].toolCall.kind === 'switch_mode', JSON.stringify(asked));
    const changed = updates('current_mode_update');
    check(changed.length === 1 && changed[0].currentModeId === 'default', JSON.stringify(changed));
    // Back in default mode, the edit asks (and is allowed) and lands.
    answer = (request) => ({ outcome: { outcome: 'selected', optionId: request.options[0].optionId } });
    const again = await prompt(agent, session.sessionId, 'NOW-EDIT');
    check(again.stopReason === 'end_turn', JSON.stringify(again));
    check(readFileSync(`${cwd}/a.txt`, 'utf8') === 'HELLO from a.txt\n', 'the edit landed in default mode');
    await agent.request('session/set_mode', { sessionId: session.sessionId, modeId: 'acceptEdits' });
    // session/load gives the modes too, with the session's current one.
    const loaded = await agent.request('session/load', { sessionId: session.sessionId, cwd, mcpServers: [] });
    check(loaded.modes?.currentModeId === 'acceptEdits', JSON.stringify(loaded));
  },

  // A permission request for an edit carries its diff; the call stays
  // `pending` until the editor answers.
  async permission_diff(agent) {
    const session = await agent.request('session/new', { cwd, mcpServers: [] });
    answer = (request) => {
      const call = request.toolCall.toolCallId;
      const before = seen.filter((s) => s.update?.toolCallId === call).map((s) => s.update.status ?? 'pending');
      check(!before.includes('in_progress'), `in_progress before the answer: ${JSON.stringify(before)}`);
      return { outcome: { outcome: 'selected', optionId: request.options[0].optionId } };
    };
    const done = await prompt(agent, session.sessionId, 'NOW-EDIT');
    check(done.stopReason === 'end_turn', JSON.stringify(done));
    const asked = seen.filter((s) => s.permission).map((s) => s.permission);
    check(asked.length === 1, JSON.stringify(asked));
    const diff = asked[0].toolCall.content?.find((c) => c.type === 'diff');
    check(diff && diff.path === `${cwd}/a.txt`, JSON.stringify(asked[0]));
    check(diff.oldText === 'hello from a.txt\n' && diff.newText === 'HELLO from a.txt\n', JSON.stringify(diff));
    const call = asked[0].toolCall.toolCallId;
    const statuses = seen.filter((s) => s.update?.toolCallId === call && s.update.status).map((s) => s.update.status);
    check(JSON.stringify(statuses.slice(-2)) === '["in_progress","completed"]', JSON.stringify(statuses));
  },

  // The editor's buffer, not the disk: read from it, edited in it.
  async fs_buffer(agent) {
    const session = await agent.request('session/new', { cwd, mcpServers: [] });
    const done = await prompt(agent, session.sessionId, 'EDIT-BUFFER');
    check(done.stopReason === 'end_turn', JSON.stringify(done));
    check(text().includes('buffer-done'), text());
    check(seen.some((s) => s.read?.path === `${cwd}/b.txt`), 'read through the editor');
    check(buffers.get(`${cwd}/b.txt`) === 'edited in the buffer\n', JSON.stringify([...buffers]));
    check(readFileSync(`${cwd}/b.txt`, 'utf8') === 'on disk\n', 'the disk is untouched');
  },

  // An image in the prompt reaches the model as an image.
  async image(agent, init) {
    check(init.agentCapabilities?.promptCapabilities?.image === true, JSON.stringify(init.agentCapabilities));
    const session = await agent.request('session/new', { cwd, mcpServers: [] });
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const done = await prompt(agent, session.sessionId, [
      { type: 'text', text: 'LOOK-AT-THIS' },
      { type: 'image', mimeType: 'image/png', data: png },
    ]);
    check(done.stopReason === 'end_turn', JSON.stringify(done));
    check(text().includes('saw-the-image'), text());
  },

  // A command's output shows while it runs (bypass mode: nothing asks).
  async live_output(agent) {
    const session = await agent.request('session/new', { cwd, mcpServers: [] });
    await agent.request('session/set_mode', { sessionId: session.sessionId, modeId: 'bypassPermissions' });
    const done = await prompt(agent, session.sessionId, 'RUN-LIVE');
    check(done.stopReason === 'end_turn', JSON.stringify(done));
    check(seen.every((s) => !s.permission), 'nothing asked in bypass mode');
    const call = updates('tool_call').find((u) => u.kind === 'execute')?.toolCallId;
    const later = updates('tool_call_update').filter((u) => u.toolCallId === call);
    const live = later.findIndex((u) => u.status === 'in_progress' && JSON.stringify(u.content ?? []).includes('live-line'));
    const end = later.findIndex((u) => u.status === 'completed');
    check(live >= 0 && end > live, JSON.stringify(later));
  },

  // The model is a session config option: offered with the current model,
  // set to another configured one (the next prompt's request names it), a
  // value outside the list refused (the model stays).
  async model(agent) {
    const session = await agent.request('session/new', { cwd, mcpServers: [] });
    const option = session.configOptions?.find((o) => o.id === 'model');
    check(option?.type === 'select' && option.category === 'model' && option.name === 'Model', JSON.stringify(session.configOptions));
    const values = option.options.map((o) => o.value);
    const first = option.currentValue;
    check(values[0] === first && first !== 'claude-switched', JSON.stringify(option));
    check(values.includes('claude-switched'), JSON.stringify(values));
    const before = await prompt(agent, session.sessionId, 'WHICH-MODEL');
    check(before.stopReason === 'end_turn' && text().includes('on-another-model'), text());
    const set = await agent.request('session/set_config_option', { sessionId: session.sessionId, configId: 'model', value: 'claude-switched' });
    check(set.configOptions?.find((o) => o.id === 'model')?.currentValue === 'claude-switched', JSON.stringify(set));
    const announced = updates('config_option_update');
    check(announced.length === 1 && announced[0].configOptions[0].currentValue === 'claude-switched', JSON.stringify(announced));
    const after = await prompt(agent, session.sessionId, 'WHICH-MODEL');
    check(after.stopReason === 'end_turn' && text().includes('on-claude-switched'), text());
    for (const [configId, value, named] of [['model', 'claude-swtiched', '`claude-swtiched`'], ['effort', 'high', '`effort`']]) {
      let refused;
      try {
        await agent.request('session/set_config_option', { sessionId: session.sessionId, configId, value });
      } catch (error) {
        refused = error;
      }
      check(refused?.code === -32602 && String(refused.message).includes(named), `refused ${configId}=${value}: ${refused?.message} ${JSON.stringify(refused)}`);
    }
    check(updates('config_option_update').length === 1, 'a refused value announces nothing');
    const loaded = await agent.request('session/load', { sessionId: session.sessionId, cwd, mcpServers: [] });
    check(loaded.configOptions?.find((o) => o.id === 'model')?.currentValue === 'claude-switched', JSON.stringify(loaded.configOptions));
    const again = await prompt(agent, session.sessionId, 'WHICH-MODEL');
    check(again.stopReason === 'end_turn' && text().endsWith('on-claude-switched'), text());
  },

  // A session whose agent has a model of its own: that model is current,
  // and choosing another is refused (it would not apply).
  async agent_model(agent) {
    const session = await agent.request('session/new', { cwd, mcpServers: [] });
    const option = session.configOptions?.find((o) => o.id === 'model');
    check(option?.currentValue === 'claude-own', JSON.stringify(session.configOptions));
    const other = option.options.map((o) => o.value).find((v) => v !== 'claude-own');
    check(other, JSON.stringify(option));
    let refused;
    try {
      await agent.request('session/set_config_option', { sessionId: session.sessionId, configId: 'model', value: other });
    } catch (error) {
      refused = error;
    }
    check(refused?.code === -32602 && String(refused.message).includes('own model'), `${refused?.message} ${JSON.stringify(refused)}`);
    check(updates('config_option_update').length === 0, 'a refused value announces nothing');
    const loaded = await agent.request('session/load', { sessionId: session.sessionId, cwd, mcpServers: [] });
    check(loaded.configOptions?.find((o) => o.id === 'model')?.currentValue === 'claude-own', JSON.stringify(loaded.configOptions));
  },

  // gyre's commands are advertised after session/new.
  async commands(agent) {
    const session = await agent.request('session/new', { cwd, mcpServers: [] });
    for (let i = 0; i < 100 && updates('available_commands_update').length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const names = updates('available_commands_update').flatMap((u) => u.availableCommands.map((c) => c.name));
    check(names.includes('compact'), JSON.stringify(names));
    // The project's own command file (.claude/commands/greet.md) and the
    // built-in init are offered, and a custom command runs expanded.
    check(names.includes('greet') && names.includes('init'), JSON.stringify(names));
    const done = await prompt(agent, session.sessionId, '/greet Ada');
    check(done.stopReason === 'end_turn', JSON.stringify(done));
    const said = updates('agent_message_chunk').map((u) => u.content?.text ?? '').join('');
    check(said.includes('greeted-ada'), said);
  },
};

if (scenario === 'fs_buffer') {
  offerFs = true;
  buffers.set(`${cwd}/b.txt`, 'unsaved in the buffer\n');
}
const run = scenarios[scenario];
check(run, `no scenario ${scenario}`);
try {
  await connect(run);
} catch (error) {
  fail(`${error?.stack ?? error} ${JSON.stringify(error)}`);
}
child.kill();
console.log(`ok ${scenario}`);
process.exit(0);
