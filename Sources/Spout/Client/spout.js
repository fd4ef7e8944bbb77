// Spout's browser client: many channels on one connection, shared by every tab of an origin.
//
//     import { subscribe } from "https://spout.example/client/spout.js";
//     const unsubscribe = subscribe(["chat", "news.*"], (message) => {
//         if (message.kind === "event") render(message.channel, message.event, message.data);
//         else if (message.kind === "reset" || message.kind === "gap") reload(message.channel);
//     });
//
// One tab (the leader, chosen with a Web Lock held for the tab's life) holds the only connection,
// `GET /subscribe?channel=…&channel=…`, for the union of the channels every tab asked for; it hands
// each frame to the other tabs over a BroadcastChannel. When the leader goes (tab closed, or its last
// subscription ended), another tab takes the lock and resumes from the last cursor it saw, so no event
// is lost; an event seen twice across the hand-over is delivered once.
//
// The stream is read with fetch() rather than EventSource: EventSource dispatches a publisher's event
// types only to listeners registered for them by name, and a shared connection cannot know the types
// every tab will meet. The cursor is sent as `?lastEventId=` and the token as `?token=`, so that a
// cross-origin request needs no preflight.
//
// No build step, no dependencies: an ES module, served by Spout at /client/spout.js (types in
// /client/spout.d.ts). See docs/CLIENT.md.

/** Where Spout is when `options.baseURL` is not given: the origin this module was loaded from. */
const defaultBase = new URL("/", import.meta.url).href;

/** Milliseconds before a reconnect when the server has not said (`retry:`), and the most a backoff waits. */
const defaultRetry = 1000;
const maxRetry = 30000;

/** How many (channel, id) pairs each tab remembers to drop an event delivered twice across a hand-over. */
const rememberedIDs = 4096;

/** The hubs of this document, one per connection setting (base URL, token, credentials, parameters). */
const hubs = new Map();

/**
 * Subscribes `handler` to `channels` (names, or patterns such as `news.*`) and returns the function that
 * ends this subscription. See spout.d.ts for the messages and the options.
 */
export function subscribe(channels, handler, options = {}) {
    const list = (typeof channels === "string" ? [channels] : Array.from(channels || [])).map(String);
    if (list.length === 0) throw new TypeError("subscribe: name at least one channel");
    if (typeof handler !== "function") throw new TypeError("subscribe: the handler must be a function");
    const settings = normalize(options);
    let hub = hubs.get(settings.key);
    if (!hub || hub.closed) {
        hub = new Hub(settings);
        hubs.set(settings.key, hub);
    }
    const subscription = { channels: list, handler, onStatus: options.onStatus };
    hub.add(subscription);
    let active = true;
    return function unsubscribe() {
        if (!active) return;
        active = false;
        hub.remove(subscription);
        if (hub.closed && hubs.get(settings.key) === hub) hubs.delete(settings.key);
    };
}

/** Whether `channel` is named by `pattern`: equal, or a `*` in the pattern stands for any run of characters. */
export function matches(pattern, channel) {
    if (!pattern.includes("*")) return pattern === channel;
    const parts = pattern.split("*");
    if (!channel.startsWith(parts[0])) return false;
    let at = parts[0].length;
    for (let index = 1; index < parts.length - 1; index++) {
        const found = channel.indexOf(parts[index], at);
        if (found < 0) return false;
        at = found + parts[index].length;
    }
    const last = parts[parts.length - 1];
    return channel.length - last.length >= at && channel.endsWith(last);
}

function normalize(options) {
    const base = new URL(options.baseURL || defaultBase, defaultBase);
    if (!base.pathname.endsWith("/")) base.pathname += "/";
    const params = [];
    for (const [name, value] of Object.entries(options.params || {})) {
        if (value !== undefined && value !== null) params.push([name, String(value)]);
    }
    if (options.presence) params.push(["presence", "true"]);
    params.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const withCredentials = Boolean(options.withCredentials);
    const token = options.token ? String(options.token) : "";
    const shared =
        options.shared !== false &&
        typeof BroadcastChannel === "function" &&
        typeof navigator !== "undefined" &&
        Boolean(navigator.locks);
    // The lock and the BroadcastChannel are per origin already; the key separates connections that differ.
    const key = JSON.stringify([base.href, withCredentials, token, params]);
    return { base: base.href, withCredentials, token, params, shared, key, name: "spout:" + hash(key) };
}

/** A short, stable name for `text` (FNV-1a, 32 bits): lock and channel names need not carry the token. */
function hash(text) {
    let value = 0x811c9dc5;
    for (let index = 0; index < text.length; index++) {
        value ^= text.charCodeAt(index);
        value = Math.imul(value, 0x01000193) >>> 0;
    }
    return value.toString(16).padStart(8, "0");
}

function randomID() {
    if (typeof crypto !== "undefined" && crypto.randomUUID) return crypto.randomUUID();
    return Math.random().toString(36).slice(2) + Date.now().toString(36);
}

/**
 * The subscriptions of one document for one connection setting, and its part in the tabs' sharing:
 * leader (holds the connection) or follower (gets the frames from the leader).
 *
 * Messages on the BroadcastChannel, all with `tab` (the sender's id):
 *   want   {channels}           the sender's channels (sent on every change, and in answer to hello)
 *   bye    {cursor}             the sender's hub is closing
 *   hello  {}                   a new leader: every tab says what it wants again
 *   frame  {cursor, message}    the leader's frame, `cursor` the connection's last id after it
 *   status {status}             the leader's connection state
 */
class Hub {
    constructor(settings) {
        this.settings = settings;
        this.tab = randomID();
        this.subscriptions = new Set();
        this.closed = false;
        this.leader = false;
        this.cursor = "";
        /** tab id → array of channels, for every other tab known to be alive (kept by followers too). */
        this.wants = new Map();
        this.seen = new Map();
        this.status = { state: "connecting", leader: false, connected: false };
        this.connection = null;
        /** Connections being replaced: kept reading until their successor is open, so nothing falls between. */
        this.retiring = new Set();
        this.openedFor = "";
        this.planned = false;
        this.release = null;
        this.abort = typeof AbortController === "function" ? new AbortController() : null;
        if (!settings.shared) {
            this.becomeLeader();
            return;
        }
        this.channel = new BroadcastChannel(settings.name);
        this.channel.onmessage = (event) => this.receive(event.data);
        // A tab going away says so at once; one restored from the back-forward cache says what it wants again.
        this.onPageHide = () => this.say("bye", { cursor: this.cursor });
        this.onPageShow = (event) => {
            if (event.persisted && this.tabLockHeld) this.say("want", { channels: this.channels() });
        };
        addEventListener("pagehide", this.onPageHide);
        addEventListener("pageshow", this.onPageShow);
        // The tab's own lock, held for its life: the leader learns from it when this tab is gone.
        this.hold(settings.name + ":tab:" + this.tab).then(() => {
            if (this.closed) return;
            this.tabLockHeld = true;
            this.say("want", { channels: this.channels() });
            // Leadership: granted when no other tab holds it, or when the one that does goes away.
            this.hold(settings.name + ":leader").then(() => {
                if (!this.closed) this.becomeLeader();
            });
        });
    }

    /** Requests lock `name` and keeps it until the hub closes; resolves when it is granted. */
    hold(name) {
        return new Promise((granted) => {
            const options = this.abort ? { signal: this.abort.signal } : {};
            navigator.locks
                .request(name, options, () => {
                    granted();
                    return new Promise((resolve) => {
                        const previous = this.release;
                        this.release = () => {
                            resolve();
                            if (previous) previous();
                        };
                        if (this.closed) this.release();
                    });
                })
                .catch(() => {});
        });
    }

    add(subscription) {
        this.subscriptions.add(subscription);
        if (subscription.onStatus) subscription.onStatus({ ...this.status });
        this.changed();
    }

    remove(subscription) {
        this.subscriptions.delete(subscription);
        if (this.subscriptions.size === 0) this.close();
        else this.changed();
    }

    /** Every channel this document's subscriptions name, sorted, once each. */
    channels() {
        const all = new Set();
        for (const subscription of this.subscriptions) for (const name of subscription.channels) all.add(name);
        return Array.from(all).sort();
    }

    /** The channels of this tab and of every other tab it knows, sorted, once each. */
    union() {
        const all = new Set(this.channels());
        for (const names of this.wants.values()) for (const name of names) all.add(name);
        return Array.from(all).sort();
    }

    changed() {
        if (this.closed) return;
        if (this.settings.shared && this.tabLockHeld) this.say("want", { channels: this.channels() });
        if (this.leader) this.plan();
    }

    say(type, fields) {
        if (!this.channel || this.closed) return;
        try {
            this.channel.postMessage({ type, tab: this.tab, ...fields });
        } catch (error) {
            // A closed channel (the document is going away): nothing to tell.
        }
    }

    receive(message) {
        if (this.closed || !message || typeof message !== "object") return;
        switch (message.type) {
            case "want":
                this.wants.set(message.tab, Array.isArray(message.channels) ? message.channels.map(String) : []);
                if (this.leader) {
                    this.watch(message.tab);
                    this.say("status", { status: this.status });
                    this.plan();
                }
                break;
            case "bye":
                this.wants.delete(message.tab);
                if (!this.leader && typeof message.cursor === "string" && message.cursor) this.cursor = message.cursor;
                if (this.leader) this.plan();
                break;
            case "hello":
                if (this.tabLockHeld) this.say("want", { channels: this.channels() });
                break;
            case "frame":
                // A frame from a leader; this tab may have become leader since it was sent (a hand-over),
                // and then its own connection's cursor wins.
                if (!this.leader && typeof message.cursor === "string" && message.cursor) this.cursor = message.cursor;
                this.deliver(message.message);
                break;
            case "status":
                if (!this.leader && message.status) this.setStatus({ ...message.status, leader: false });
                break;
        }
    }

    /** Leader: forgets tab `tab`'s channels once its tab lock is free (the tab closed or crashed). */
    watch(tab) {
        if (!this.settings.shared || this.watched.has(tab)) return;
        this.watched.add(tab);
        const options = this.abort ? { signal: this.abort.signal } : {};
        navigator.locks
            .request(this.settings.name + ":tab:" + tab, options, () => {
                this.watched.delete(tab);
                if (this.closed || !this.wants.has(tab)) return;
                this.wants.delete(tab);
                this.plan();
            })
            .catch(() => {});
    }

    async becomeLeader() {
        this.leader = true;
        this.watched = new Set();
        this.setStatus({ state: "connecting", connected: false, leader: true });
        if (this.settings.shared) {
            // Drop the channels of tabs already gone (crashed without a bye), then watch the others.
            try {
                const state = await navigator.locks.query();
                const alive = new Set(
                    (state.held || []).map((lock) => lock.name).filter((name) => name.startsWith(this.settings.name))
                );
                for (const tab of Array.from(this.wants.keys())) {
                    if (!alive.has(this.settings.name + ":tab:" + tab)) this.wants.delete(tab);
                }
            } catch (error) {
                // Without the query, the watches below still drop them.
            }
            if (this.closed) return;
            for (const tab of this.wants.keys()) this.watch(tab);
            this.say("hello", {});
        }
        this.plan();
    }

    /**
     * Leader: (re)opens the connection for the union of the tabs' channels, after the current task, once for
     * any number of changes. Make before break: an open connection keeps reading until the new one is open
     * (an event both carry is delivered once), so that nothing is missed even before the first event has
     * given a cursor to resume from.
     */
    plan() {
        if (this.planned || this.closed) return;
        this.planned = true;
        queueMicrotask(() => {
            this.planned = false;
            if (this.closed || !this.leader) return;
            const channels = this.union();
            const wanted = channels.join("\n");
            if (wanted === this.openedFor && this.connection) return;
            this.openedFor = wanted;
            const previous = this.connection;
            if (previous && previous.isOpen) {
                previous.retired = true;
                this.retiring.add(previous);
            } else if (previous) {
                previous.stop();
            }
            this.connection = channels.length ? new Connection(this, channels) : null;
            if (!this.connection) this.stopRetiring();
        });
    }

    /** Leader: `connection` is open; the ones it replaces can go. */
    opened(connection) {
        if (connection === this.connection) this.stopRetiring();
    }

    stopRetiring() {
        for (const connection of this.retiring) connection.stop();
        this.retiring.clear();
    }

    /**
     * Leader: a frame from `connection`, for this tab's subscriptions and every other tab's. Only the current
     * connection moves the cursor (a retiring one's cursor does not cover the new channels).
     */
    frame(message, cursor, connection) {
        if (cursor && connection === this.connection) this.cursor = cursor;
        this.say("frame", { cursor: this.cursor, message });
        this.deliver(message);
    }

    deliver(message) {
        if (!message || typeof message.channel !== "string") return;
        if (message.kind === "event") {
            const key = message.channel + "\u0000" + message.id;
            if (this.seen.has(key)) return;
            this.seen.set(key, true);
            if (this.seen.size > rememberedIDs) this.seen.delete(this.seen.keys().next().value);
        }
        for (const subscription of Array.from(this.subscriptions)) {
            if (!this.subscriptions.has(subscription)) continue;
            if (!subscription.channels.some((pattern) => matches(pattern, message.channel))) continue;
            try {
                subscription.handler({ ...message });
            } catch (error) {
                setTimeout(() => {
                    throw error;
                });
            }
        }
    }

    setStatus(status) {
        this.status = status;
        for (const subscription of this.subscriptions) {
            if (subscription.onStatus) {
                try {
                    subscription.onStatus({ ...status });
                } catch (error) {
                    setTimeout(() => {
                        throw error;
                    });
                }
            }
        }
    }

    /** Leader: the state of `connection` (if it is the current one), for this tab and the followers. */
    connectionStatus(fields, connection) {
        if (connection !== this.connection) return;
        this.setStatus({ ...this.status, ...fields, leader: true });
        this.say("status", { status: this.status });
    }

    close() {
        if (this.closed) return;
        this.say("bye", { cursor: this.cursor });
        this.closed = true;
        if (this.connection) this.connection.stop();
        this.connection = null;
        this.stopRetiring();
        if (this.onPageHide) removeEventListener("pagehide", this.onPageHide);
        if (this.onPageShow) removeEventListener("pageshow", this.onPageShow);
        if (this.channel) this.channel.close();
        if (this.release) this.release();
        if (this.abort) this.abort.abort();
    }
}

/** The leader's stream: `GET /subscribe?channel=…`, read with fetch, reconnected with the cursor. */
class Connection {
    constructor(hub, channels) {
        this.hub = hub;
        this.channels = channels;
        this.stopped = false;
        /** Being replaced: it does not reconnect. */
        this.retired = false;
        this.isOpen = false;
        this.retry = defaultRetry;
        this.failures = 0;
        this.timer = null;
        this.controller = null;
        this.open();
    }

    url() {
        const settings = this.hub.settings;
        const url = new URL("subscribe", settings.base);
        for (const name of this.channels) url.searchParams.append("channel", name);
        if (this.hub.cursor) url.searchParams.set("lastEventId", this.hub.cursor);
        if (settings.token) url.searchParams.set("token", settings.token);
        for (const [name, value] of settings.params) url.searchParams.append(name, value);
        return url.href;
    }

    async open() {
        if (this.stopped) return;
        this.timer = null;
        this.controller = new AbortController();
        this.hub.connectionStatus({ state: "connecting", connected: false }, this);
        let failure = "";
        let gaveUp = false;
        try {
            const response = await fetch(this.url(), {
                headers: { Accept: "text/event-stream" },
                credentials: this.hub.settings.withCredentials ? "include" : "same-origin",
                cache: "no-store",
                signal: this.controller.signal,
            });
            if (response.status === 204) {
                failure = "the server has nothing more for these channels (204)";
                gaveUp = true;
            } else if (!response.ok || !response.body) {
                failure = await problemText(response);
                // A client error will not mend by itself, but rights may be granted later: retry slowly.
                if (response.status >= 400 && response.status < 500) this.failures = Math.max(this.failures, 4);
            } else if (!/^text\/event-stream/i.test(response.headers.get("Content-Type") || "")) {
                failure = "the answer is not an event stream";
            } else {
                this.failures = 0;
                this.isOpen = true;
                this.hub.opened(this);
                this.hub.connectionStatus({ state: "open", connected: true, error: undefined }, this);
                await this.read(response.body);
                failure = "the stream ended";
            }
        } catch (error) {
            if (this.stopped) return;
            failure = String((error && error.message) || error);
        }
        this.isOpen = false;
        if (this.stopped) return;
        if (this.retired) {
            this.stop();
            return;
        }
        this.failures++;
        const wait = Math.min(maxRetry, this.retry * 2 ** Math.min(this.failures - 1, 5));
        this.hub.connectionStatus(
            { state: gaveUp ? "closed" : "reconnecting", connected: false, error: failure },
            this
        );
        if (!gaveUp) this.timer = setTimeout(() => this.open(), wait);
    }

    /** Reads an event stream (WHATWG HTML §9.2.6) and hands its frames to the hub. */
    async read(body) {
        const reader = body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        let data = [];
        let type = "";
        let id = null;
        let sawCarriageReturn = false;
        const dispatch = () => {
            const block = { data, type, id };
            data = [];
            type = "";
            id = null;
            if (block.data.length) this.frame(block);
        };
        while (!this.stopped) {
            const { value, done } = await reader.read();
            if (done || this.stopped) break;
            let text = decoder.decode(value, { stream: true });
            // A CR LF split across two chunks: the LF was already counted with the CR.
            if (sawCarriageReturn && text.startsWith("\n")) text = text.slice(1);
            buffer += text;
            let start = 0;
            for (let index = 0; index < buffer.length; index++) {
                const character = buffer[index];
                if (character !== "\n" && character !== "\r") continue;
                const line = buffer.slice(start, index);
                if (character === "\r" && buffer[index + 1] === "\n") index++;
                start = index + 1;
                if (line === "") {
                    dispatch();
                    continue;
                }
                if (line.startsWith(":")) continue;
                const colon = line.indexOf(":");
                const field = colon < 0 ? line : line.slice(0, colon);
                let content = colon < 0 ? "" : line.slice(colon + 1);
                if (content.startsWith(" ")) content = content.slice(1);
                if (field === "data") data.push(content);
                else if (field === "event") type = content;
                else if (field === "id" && !content.includes("\u0000")) id = content;
                else if (field === "retry" && /^[0-9]+$/.test(content)) this.retry = Math.max(100, Number(content));
            }
            sawCarriageReturn = buffer.endsWith("\r");
            buffer = buffer.slice(start);
            if (buffer.length > 8 * 1024 * 1024) throw new Error("an event longer than 8 MiB");
        }
        try {
            reader.cancel();
        } catch (error) {
            // Already closed.
        }
    }

    /** One dispatched block: an event of a channel (it has an `id:`), or a control frame (it has none). */
    frame(block) {
        let payload;
        try {
            payload = JSON.parse(block.data.join("\n"));
        } catch (error) {
            return;
        }
        if (!payload || typeof payload !== "object") return;
        if (block.id !== null) {
            if (typeof payload.channel !== "string") return;
            const message = {
                kind: "event",
                channel: payload.channel,
                id: String(payload.id),
                event: block.type || "message",
                data: payload.data,
            };
            this.hub.frame(message, block.id, this);
            return;
        }
        switch (block.type) {
            case "reset":
            case "gap":
            case "join":
            case "leave":
                if (typeof payload.channel === "string") this.hub.frame({ ...payload, kind: block.type }, "", this);
                break;
            case "end":
                // The server ends the stream (shutdown, or this reader fell behind): read() sees the end
                // next, and the reconnect resumes from the cursor.
                this.hub.connectionStatus(
                    { state: "reconnecting", connected: false, error: "end: " + payload.reason },
                    this
                );
                break;
            case "error":
                this.hub.connectionStatus({ error: payload.detail || payload.title || "error" }, this);
                break;
        }
    }

    stop() {
        this.stopped = true;
        this.isOpen = false;
        if (this.timer) clearTimeout(this.timer);
        if (this.controller) this.controller.abort();
    }
}

/** A short description of a failed answer: its problem's detail when it has one. */
async function problemText(response) {
    let detail = "";
    try {
        const problem = await response.json();
        detail = problem.detail || problem.title || "";
    } catch (error) {
        // Not JSON.
    }
    return "HTTP " + response.status + (detail ? ": " + detail : "");
}
