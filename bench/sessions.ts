export async function runSessionsBench(): Promise<void> {}
