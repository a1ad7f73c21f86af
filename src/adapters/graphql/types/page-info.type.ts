import { Field, ObjectType } from '../type-graphql.shim.js'

/** Where a page sits in its connection (the Relay `PageInfo`, forward pagination). */
@ObjectType('PageInfo', { simpleResolvers: true, description: 'Where a page sits in its connection.' })
export class PageInfo {
  @Field(() => Boolean, { description: 'Whether another page follows; ask for it with `after: endCursor`.' })
  hasNextPage!: boolean

  @Field(() => String, {
    nullable: true,
    description: 'The cursor of the last edge of this page; null when the page is empty.',
  })
  endCursor!: string | null
}
