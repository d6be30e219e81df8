public class Bootstrap {
    static {
        System.setProperty("generic.api.key", "CLOJ@@ARS_34bf0e88955ff5a1c328d6a7491acc4f48e865a7b8dd4d70a70749037443");
        System.setProperty("generic.api.key", "vdA8@@6HmNBclLx1pa0wsob8EuvK5xko");
    }
}
