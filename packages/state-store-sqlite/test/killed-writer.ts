// Child process for the killed-writer test: opens the store's file, begins
// an IMMEDIATE transaction, writes half of a two-key change, says so, and
// waits to be killed with SIGKILL mid-transaction.
import Database from "better-sqlite3";

const [file] = process.argv.slice(2);
const db = new Database(file as string);
db.exec("BEGIN IMMEDIATE");
db.prepare("UPDATE agent_computer_state SET version = version + 1, value = ? WHERE key = ?").run(
  '{"half":true}',
  "pair/a",
);
process.stdout.write("mid-transaction\n");
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
