// The prebuilt browser builds the dashboard loads before its own scripts, as the globals they
// define, typed by the packages' own declarations. uPlot's declare its global (`export as
// namespace uPlot`); graphql-ws's UMD build defines `graphqlWs` (the playground loads it too).
/// <reference types="uplot" />
import type * as GraphqlWs from 'graphql-ws'

declare global {
  const graphqlWs: typeof GraphqlWs
}
