public class Bootstrap {
    static {
        System.setProperty("anthropic.api.key", "sk-a@@nt-api03-7kezr7a5uefqah5lr-zrh3q3lrpo40lbww6hnkz-3azkv_kwjl47fevxamhu2m-p79e7toi3dj2vmn3uitob46gm04actAA");
    }
}
