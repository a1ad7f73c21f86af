import { defineConfig } from 'drizzle-kit'

// Migrations are generated from the tables and committed; livegate applies them at start.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/storage/tables/*.table.ts',
  out: './schema/migrations',
})
