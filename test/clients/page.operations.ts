// The operations a frontend's pages send, written against issue 11's pinned schema contract: the
// one place the Apollo Client and urql tests take them from. (Once the schema carries them they
// belong in schema/operations.graphql, where graphql-codegen types them.)
import { type TypedDocumentNode, gql } from '@apollo/client'

// `any`: the tests read answers of several shapes and assert on them.
type Document = TypedDocumentNode<any, Record<string, unknown>>

const TASK_CARD = gql`
  fragment TaskCard on Task {
    id
    taskId
    serviceCode
    status
    userName
    user { id serviceCode userName }
    outputs { id tag playUrl task { id } }
  }
`

/** Global ids of tasks by their hashed ids: how a page that has a hashed id finds its task. */
export const TASK_IDS: Document = gql`
  query TaskIds($taskIds: [String!]) {
    tasks(filter: { taskIds: $taskIds }) { edges { node { id taskId } } }
  }
`

/** A task page: the task, its broadcaster, its outputs, and its notifications a page at a time. */
export const TASK_PAGE: Document = gql`
  query TaskPage($id: ID!, $first: Int, $after: String) {
    task(id: $id) {
      ...TaskCard
      notifications(first: $first, after: $after) {
        totalCount
        pageInfo { hasNextPage endCursor }
        edges { cursor node { id kind type receivedAt taskId task { id } user { id } } }
      }
    }
  }
  ${TASK_CARD}
`

/** A user page: the user, found by global id through `node`, and their tasks a page at a time. */
export const USER_PAGE: Document = gql`
  query UserPage($id: ID!, $first: Int, $after: String) {
    node(id: $id) {
      __typename
      id
      ... on User {
        serviceCode
        userName
        tasks(first: $first, after: $after) {
          totalCount
          pageInfo { hasNextPage endCursor }
          edges { cursor node { id taskId status user { id } } }
        }
      }
    }
  }
`

/** One task's changes, as its page subscribes to them. */
export const TASK_WATCH: Document = gql`
  subscription TaskWatch($ids: [ID!]) {
    taskChanged(filter: { ids: $ids }) { ...TaskCard }
  }
  ${TASK_CARD}
`
