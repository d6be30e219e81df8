public class Bootstrap {
    static {
        System.setProperty("dynatrace.api.token", "dt0c@@01.sgu5zu1qa3hxgqgaywuv8oqz.berqnnezfampti7bae5at4cabiznv3zwr9p0o4xwv4h3c9a7wyfezx27j0vis0n6");
    }
}
