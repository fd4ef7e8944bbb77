// Types of Spout's browser client, /client/spout.js (see docs/CLIENT.md).
//
//     import { subscribe } from "https://spout.example/client/spout.js";
//     // with, in tsconfig.json's "paths" (or a declare module), this file for that URL.

/** An event published on a channel. */
export interface SpoutEvent {
    kind: "event";
    /** The channel it was published on (a concrete name, also when the subscription named a pattern). */
    channel: string;
    /** Its id in its channel, e.g. `mitq0a1c-42`: opaque, rising strictly per channel. */
    id: string;
    /** The publisher's `event` type, or `"message"` when it gave none. */
    event: string;
    /** The publisher's `data`, parsed. */
    data: unknown;
}

/**
 * The server could not resume `channel` where this client left it: the events after the cursor were
 * dropped from its history (`history-truncated`), or the cursor is from an earlier run (`unknown-id`).
 * The history follows, from `oldest`; reload whatever is derived from the channel.
 */
export interface SpoutReset {
    kind: "reset";
    channel: string;
    reason: "history-truncated" | "unknown-id" | string;
    oldest: string | null;
}

/** The connection read too slowly and `missed` events of `channel` after `after` were dropped. */
export interface SpoutGap {
    kind: "gap";
    channel: string;
    missed: number;
    /** The id of the last event of `channel` before the dropped ones (null when there was none). */
    after: string | null;
}

/** With `presence: true`: a subscriber joined or left `channel`. */
export interface SpoutPresence {
    kind: "join" | "leave";
    channel: string;
    client: string;
}

/** What a handler is given: an event, or a control frame about a channel it asked for. */
export type SpoutMessage = SpoutEvent | SpoutReset | SpoutGap | SpoutPresence;

/** The state of the shared connection, as this tab knows it. */
export interface SpoutStatus {
    /** `connecting`, `open`, `reconnecting`, or `closed` (the server answered 204: nothing will come). */
    state: "connecting" | "open" | "reconnecting" | "closed";
    /** Whether the connection is open (held by this tab or by the leader tab). */
    connected: boolean;
    /** Whether this tab holds the connection. */
    leader: boolean;
    /** Why the last attempt failed, when it did. */
    error?: string;
}

export interface SpoutOptions {
    /**
     * Where Spout is, e.g. `https://spout.example/`; the routes are resolved against it. Default: the origin
     * the module was loaded from.
     */
    baseURL?: string;
    /** Send cookies and HTTP authentication with the (cross-origin) request. Default false. */
    withCredentials?: boolean;
    /** A subscribe token (`channels.subscribeTokens`), sent as `?token=`. */
    token?: string;
    /** Ask for `join`/`leave` frames (`?presence=true`). */
    presence?: boolean;
    /** Further query parameters of the subscription, e.g. `{ client: "ada" }`. */
    params?: Record<string, string | number | boolean>;
    /**
     * Share one connection among the tabs of this origin (Web Locks and BroadcastChannel). Default true;
     * where either is missing, each tab has its own connection.
     */
    shared?: boolean;
    /** Called with the connection's state now and on every change. */
    onStatus?: (status: SpoutStatus) => void;
}

/**
 * Subscribes `handler` to `channels` (names, or patterns `prefix*` such as `news.*`) and returns the function
 * that ends this subscription. Subscriptions with the same `baseURL`, `token`, `withCredentials`, `presence`
 * and `params`, in every tab of the origin, share one connection.
 */
export function subscribe(
    channels: string | Iterable<string>,
    handler: (message: SpoutMessage) => void,
    options?: SpoutOptions
): () => void;

/**
 * Whether `channel` is named by `pattern`: equal, or each `*` in the pattern standing for any characters (the
 * server takes patterns of the form `prefix*`).
 */
export function matches(pattern: string, channel: string): boolean;
