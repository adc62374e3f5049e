// The file is imported as text (`with { type: "text" }`), to be served, never run by the node.
declare const text: string;
export default text;
