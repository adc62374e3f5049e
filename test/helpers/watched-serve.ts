/** serveBinary (./binary) already watches the node's log; these names are kept for the tests that use them. */
export { serveBinary as serveWatched, type ServedBinary as WatchedServe } from "./binary";
