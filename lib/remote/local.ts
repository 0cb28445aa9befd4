/**
 * What needs no connection to a remote: the `remotes` table and URL display. A light entry: it
 * loads no PostgreSQL driver, so a process that only lists remotes or reads states never does.
 */
export { addRemote, getRemote, listRemotes, removeRemote, remoteRefs, type RemoteRow, type RemoteRefRow } from './remotes.js';
export { displayUrl, withoutPassword, ENV_URL } from './url.js';
