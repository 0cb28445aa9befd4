declare module 'pgpass' {
  interface ConnInfo {
    host?: string;
    port?: number;
    database?: string;
    user?: string;
  }
  function pgpass(conn: ConnInfo, cb: (password?: string) => void): void;
  export default pgpass;
}
