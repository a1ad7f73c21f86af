/**
 * type-graphql, for every file of ours that declares GraphQL types: import its decorators from
 * here, never from 'type-graphql' directly, so the Reflect metadata API it calls in every
 * decorator is loaded first.
 *
 * esbuild (tsx, vitest) emits no design-type metadata, so that lookup always misses: every
 * `@Field`, `@Arg` and `@Query` must name its type explicitly, and a missing one fails at schema
 * build (NoExplicitTypeError) rather than being guessed.
 *
 * Declare object types with `simpleResolvers: true`: otherwise type-graphql gives every field a
 * resolver of its own, which graphql-jit (jit.executor.ts) must call instead of reading the
 * property inline. Fields that compute (`@FieldResolver`, a method) keep theirs either way.
 */
import 'reflect-metadata'

export * from 'type-graphql'
