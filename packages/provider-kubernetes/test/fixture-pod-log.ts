import type { ServerResponse } from "node:http";
import type Docker from "dockerode";

/**
 * `GET /api/v1/namespaces/{namespace}/pods/{name}/log` (the API reference's
 * "read log of the specified Pod"): the container's output as text/plain,
 * from `sinceTime` (RFC 3339) when given, kept open while `follow=true`
 * until the container is gone. The fixture answers 400 for a container the
 * pod does not have or that has not started, as kube-apiserver does.
 */
export async function servePodLog(
  docker: Docker,
  res: ServerResponse,
  containerId: string,
  query: URLSearchParams,
): Promise<void> {
  const follow = query.get("follow") === "true";
  const sinceTime = query.get("sinceTime");
  const since = sinceTime ? Math.floor(Date.parse(sinceTime) / 1000) : 0;
  const container = docker.getContainer(containerId);
  res.writeHead(200, { "Content-Type": "text/plain", "Transfer-Encoding": "chunked" });
  if (!follow) {
    const output = (await container.logs({ follow: false, stdout: true, stderr: true, since })) as Buffer;
    res.end(demuxed(output));
    return;
  }
  const stream = (await container.logs({
    follow: true,
    stdout: true,
    stderr: true,
    since,
  })) as NodeJS.ReadableStream & {
    destroy(): void;
  };
  docker.modem.demuxStream(stream, res, res);
  stream.on("end", () => res.end());
  stream.on("error", () => res.end());
  res.on("close", () => stream.destroy());
}

/** The engine's multiplexed output (8-byte frame headers) as its payload only. */
function demuxed(output: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at + 8 <= output.length; ) {
    const size = output.readUInt32BE(at + 4);
    parts.push(output.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return Buffer.concat(parts);
}
