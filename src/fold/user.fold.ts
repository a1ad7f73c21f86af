import type { UpstreamUser } from '../model/task-list.schema.js'
import type { CallbackEvent, UserSightingEvent } from './fold.event.js'
import { DISCONNECT_REASON_BY_CODE, RESUME_STATUS_BY_CODE, type UserNode } from './graph.model.js'
import { addLatest, compareStamps, later, maxOf, minOf, type Register } from './lattice.rules.js'

/** A type 8 notification, as kept in a user's state. */
export interface DisconnectFacts {
  reason: number | null
  sessionDuration: number | null
}

/** Everything known of one user of one service code, as plain JSON. */
export interface UserState {
  v: 1
  serviceCode: string
  userName: string
  vsId: Register<string> | null
  listed: Register<UpstreamUser> | null
  firstSeenAt: number | null
  lastSeenAt: number | null
  lastAbsentAt: number | null
  disconnects: Register<DisconnectFacts>[]
  resumes: Register<number>[]
}

/** How many of a user's latest disconnects and resumes the state keeps. */
export const KEPT_PER_USER = 50

/** The state of a user nothing is known of yet. */
export function emptyUserState(serviceCode: string, userName: string): UserState {
  return {
    v: 1,
    serviceCode,
    userName,
    vsId: null,
    listed: null,
    firstSeenAt: null,
    lastSeenAt: null,
    lastAbsentAt: null,
    disconnects: [],
    resumes: [],
  }
}

/** Folds a callback naming the user (`author` or `username`) into the user's state. */
export function applyUserCallback(state: UserState, event: CallbackEvent): UserState {
  const { callback, stamp } = event
  if (callback.userName !== state.userName) return state
  const next: UserState = {
    ...state,
    firstSeenAt: minOf(state.firstSeenAt, stamp.at),
    vsId: callback.vsId ? later(state.vsId, { stamp, value: callback.vsId }) : state.vsId,
  }
  if (callback.kind === 'CLIENT_DISCONNECT') {
    const facts = {
      reason: callback.values.disconnectReason ?? null,
      sessionDuration: callback.values.sessionDuration ?? null,
    }
    next.disconnects = addLatest(state.disconnects, { stamp, value: facts }, KEPT_PER_USER)
  } else if (callback.kind === 'LIVE_RESUME') {
    next.resumes = addLatest(state.resumes, { stamp, value: callback.values.status ?? 0 }, KEPT_PER_USER)
  }
  return next
}

/** Folds what one successful task_list answer said of the user: listed, or absent. */
export function applyUserSighting(state: UserState, event: UserSightingEvent): UserState {
  if (!event.user) return { ...state, lastAbsentAt: maxOf(state.lastAbsentAt, event.takenAt) }
  return {
    ...state,
    firstSeenAt: minOf(state.firstSeenAt, event.takenAt),
    lastSeenAt: maxOf(state.lastSeenAt, event.takenAt),
    listed: later(state.listed, { stamp: { at: event.takenAt, key: 'task_list' }, value: event.user }),
  }
}

/** Whether the latest successful task_list answer about the user listed them. */
export function isOnline(state: UserState): boolean {
  return state.lastSeenAt !== null && (state.lastAbsentAt === null || state.lastSeenAt > state.lastAbsentAt)
}

/** The graph's view of a user's state. */
export function deriveUser(state: UserState): UserNode {
  const listed = state.listed?.value ?? null
  const latestEvent = [...state.disconnects, ...state.resumes].reduce<number | null>(
    (latest, { stamp }) => maxOf(latest, stamp.at),
    null,
  )
  return {
    serviceCode: state.serviceCode,
    userName: state.userName,
    vsId: listed?.vs_id ?? state.vsId?.value ?? null,
    clientVersion: listed?.client_version ?? null,
    deviceType: listed?.device_type ?? null,
    online: isOnline(state),
    firstSeenAt: state.firstSeenAt === null ? null : new Date(state.firstSeenAt),
    lastSeenAt: toDate(maxOf(state.lastSeenAt, latestEvent)),
    disconnects: [...state.disconnects]
      .sort((a, b) => compareStamps(a.stamp, b.stamp))
      .map(({ stamp, value }) => ({
        reason: value.reason === null ? null : (DISCONNECT_REASON_BY_CODE[value.reason] ?? null),
        reasonCode: value.reason,
        sessionDuration: value.sessionDuration,
        at: new Date(stamp.at),
      })),
    resumes: [...state.resumes]
      .sort((a, b) => compareStamps(a.stamp, b.stamp))
      .map(({ stamp, value }) => ({ status: RESUME_STATUS_BY_CODE[value] ?? 'WAITING', at: new Date(stamp.at) })),
  }
}

function toDate(ms: number | null): Date | null {
  return ms === null ? null : new Date(ms)
}
