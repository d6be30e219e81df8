public class Bootstrap {
    static {
        System.setProperty("anthropic.api.key", "sk-a@@nt-api03-x5r7uqaq38nq6d49ej0_w-fx6d9twy9gtjsk6xnwfouhu2-xa2aa0geis9460zr68i8has7u06sf7v3e8hi073ehwhjyuAA");
    }
}
