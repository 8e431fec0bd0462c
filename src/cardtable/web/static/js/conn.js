// One WebSocket to /ws/tables/{id} (docs/protocol.md): hello with the stored token, snapshots and
// updates stamped with a version, actions with a client seq, automatic reconnection with backoff.

/** Refusals of a connection that another try would meet again (a daily deal's table while its day lasts). */
const FINAL = new Set(['daily.private']);

export class TableConnection {
  /**
   * handlers: {welcome(msg), snapshot(msg), update(msg), table(msg), hand_over(msg), warning(msg),
   *            error(msg), status(state)} where state is 'connecting' | 'open' | 'closed'.
   */
  constructor(tableId, token, handlers) {
    this.tableId = tableId;
    this.token = token || null;
    this.h = handlers;
    this.v = null;
    this.seq = 0;
    this.pending = new Map(); // seq -> {action, resolve}
    this.attempt = 0;
    this.closed = false;
    this.ws = null;
    this.rtt = null;
    this.open();
  }

  open() {
    if (this.closed) return;
    const proto = location.protocol === 'https:' ? 'wss' : 'ws';
    const ws = new WebSocket(`${proto}://${location.host}/ws/tables/${encodeURIComponent(this.tableId)}`);
    this.ws = ws;
    this.h.status?.('connecting');
    ws.onopen = () => {
      this.attempt = 0;
      ws.send(JSON.stringify({ type: 'hello', token: this.token }));
      this.h.status?.('open');
      clearInterval(this.pinger);
      // every 2 s, with the last round trip: the server's delay estimate for fair races (docs/protocol.md, "Fairness")
      this.pinger = setInterval(() => this.send(this.rtt == null ? { type: 'ping', t: performance.now() }
        : { type: 'ping', t: performance.now(), rtt: this.rtt }), 2000);
    };
    ws.onmessage = (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch { return; }
      this.receive(msg);
    };
    ws.onclose = () => {
      clearInterval(this.pinger);
      if (this.ws !== ws) return;
      this.failPending(null);
      this.h.status?.('closed');
      if (this.closed) return;
      const delay = Math.min(10000, 400 * 2 ** this.attempt) * (0.75 + Math.random() * 0.5);
      this.attempt += 1;
      this.retry = setTimeout(() => this.open(), delay);
    };
    ws.onerror = () => { /* onclose follows */ };
  }

  receive(msg) {
    switch (msg.type) {
      case 'welcome': this.h.welcome?.(msg); break;
      case 'snapshot':
        this.v = msg.v;
        this.failPending(null);
        this.h.snapshot?.(msg);
        break;
      case 'update':
        if (this.v !== null && msg.v !== this.v + 1) {
          if (msg.v <= this.v) break; // already seen
          this.send({ type: 'resync' });
          break;
        }
        this.v = msg.v;
        this.h.update?.(msg);
        break;
      case 'ack': {
        const p = this.pending.get(msg.seq);
        this.pending.delete(msg.seq);
        p?.resolve({ ok: true, v: msg.v });
        break;
      }
      case 'reject': {
        const p = this.pending.get(msg.seq);
        this.pending.delete(msg.seq);
        p?.resolve({ ok: false, reason: msg.reason, code: msg.code ?? null, params: msg.params || {} });
        break;
      }
      case 'pong': this.rtt = performance.now() - msg.t; break;
      case 'error':
        if (FINAL.has(msg.code)) this.closed = true; // asking again cannot help: no reconnection
        this.h.error?.(msg);
        break;
      default: this.h[msg.type]?.(msg);
    }
  }

  failPending(reason) {
    for (const p of this.pending.values()) p.resolve({ ok: false, reason, lost: true });
    this.pending.clear();
  }

  send(msg) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) { this.ws.send(JSON.stringify(msg)); return true; }
    return false;
  }

  /** Send an action; resolves to {ok: true, v} or {ok: false, reason, code, params} (word it with i18n.wordRefusal). */
  act(action) {
    const seq = ++this.seq;
    return new Promise((resolve) => {
      if (!this.send({ type: 'action', seq, action })) { resolve({ ok: false, reason: null, lost: true }); return; }
      this.pending.set(seq, { action, resolve });
    });
  }

  resync() { this.send({ type: 'resync' }); }

  close() {
    this.closed = true;
    clearTimeout(this.retry);
    clearInterval(this.pinger);
    this.failPending(null);
    if (this.ws) { const ws = this.ws; this.ws = null; ws.close(); }
  }
}
