import { parse } from 'graphql'
import { taskJsonPartSql } from '../../src/storage/graph/task.json.js'
import { jsonTextExecution } from '../../src/adapters/graphql/pipeline/json.rewrite.js'
import { jsonReadOf } from '../../src/adapters/graphql/reads/json.parts.js'
import { buildGraphqlSchema } from '../../src/adapters/graphql/pipeline/schema.build.js'
import { TASK_PAGE_QUERY } from './query.bench.js'
const ex = jsonTextExecution(await buildGraphqlSchema())!
const doc = ex.rewrite(parse(TASK_PAGE_QUERY), undefined)!
const read = jsonReadOf({ fieldNodes: [(doc.definitions[0] as any).selectionSet.selections[0]] })!
const i = Number(process.argv[2] ?? 0)
console.log(`explain analyze select (${taskJsonPartSql(read.parts[i]!, 'n')}) from (select node || '{}'::jsonb as n from tasks order by sort_at desc, id desc limit 51) t;`)
