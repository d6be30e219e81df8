public class Bootstrap {
    static {
        System.setProperty("jfrog.api.key", "56ly@@rgqbwglyz7xdzbf137qe4c8ei9yw4e3j8pxemlrws32qlwzzstr7uic6h4t3sxble9yui");
    }
}
