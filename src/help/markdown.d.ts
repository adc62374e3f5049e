// The topic pages are imported as text (`with { type: "text" }`): Bun embeds them in the compiled binary.
declare module "*.md" {
  const text: string;
  export default text;
}
