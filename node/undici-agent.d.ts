/** undici's `Agent` module alone (node/http-exchange.ts loads it rather than the package's index). */
declare module "undici/lib/dispatcher/agent.js" {
  import { Agent } from "undici";
  export default Agent;
}
