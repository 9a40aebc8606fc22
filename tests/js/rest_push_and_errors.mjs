// Drives the official A2A JavaScript SDK's 0.3 HTTP+JSON client against a served hub:
// creates a push config on a task, reads it back, and asks for a task that does not exist.
// Usage: node rest_push_and_errors.mjs <agent REST base URL> <task id> <webhook URL>
// Prints one JSON object on stdout for the pytest test that runs it to judge.
import { RestTransport, TaskNotFoundError } from "@a2a-js/sdk/client";

const [endpoint, taskId, webhook] = process.argv.slice(2);
const transport = new RestTransport({ endpoint });
const config = { id: "from-js", url: webhook, token: "js-token" };

const created = await transport.setTaskPushNotificationConfig({
  taskId,
  pushNotificationConfig: config,
});
const read = await transport.getTaskPushNotificationConfig({
  id: taskId,
  pushNotificationConfigId: config.id,
});

let unknown;
try {
  await transport.getTask({ id: "no-such-task-anywhere" });
  unknown = { thrown: false };
} catch (error) {
  unknown = {
    thrown: true,
    taskNotFound: error instanceof TaskNotFoundError,
    name: error.constructor.name,
    message: error.message,
  };
}

console.log(JSON.stringify({ created, read, unknown }));
