/**
 * The stages of a computer image build, in order: find the engine, make
 * sure the base image is there, check for an image with the wanted tag,
 * build, done.
 */
export type ImageBuildStage = "engine" | "base-image" | "cache" | "build" | "done";
