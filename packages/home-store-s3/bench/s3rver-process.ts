// The bench's S3 server in its own process, so the checkpointing process's
// CPU and peak RSS are its own. Prints the port, serves until killed.
import S3rver from "s3rver";

const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: process.argv[2] as string });
const { port } = (await server.run()) as { port: number };
process.stdout.write(`${port}\n`);
