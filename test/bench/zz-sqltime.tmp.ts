import { parse } from 'graphql'
import { openDatabase } from '../../src/storage/database.client.js'
import { listTasks } from '../../src/storage/graph/task.queries.js'
import { jsonTextExecution } from '../../src/adapters/graphql/pipeline/json.rewrite.js'
import { jsonReadOf } from '../../src/adapters/graphql/reads/json.parts.js'
import { buildGraphqlSchema } from '../../src/adapters/graphql/pipeline/schema.build.js'
import { TASK_PAGE_QUERY } from '../../test/bench/query.bench.js'
const ex = jsonTextExecution(await buildGraphqlSchema())!
const doc = ex.rewrite(parse(TASK_PAGE_QUERY), undefined)!
const tasksField = (doc.definitions[0] as any).selectionSet.selections[0]
const read = jsonReadOf({ fieldNodes: [tasksField] })!
const database = await openDatabase({ url: process.env.URL!, dataDir: ':memory:' })
for (const mode of ['obj', 'text', 'obj', 'text', 'obj', 'text']) {
  const t = performance.now()
  for (let i = 0; i < 10; i++) await listTasks(database.db, {}, undefined, 51, ['status', 'endReason', 'author', 'node'], mode === 'text' ? read : undefined)
  console.log(mode, ((performance.now() - t) / 10).toFixed(1), 'ms')
}
const rows = await listTasks(database.db, {}, undefined, 2, ['node'], read)
console.log(JSON.stringify(rows[0]).length, String(rows[0]?.json0).slice(0, 300))
await database.close()
